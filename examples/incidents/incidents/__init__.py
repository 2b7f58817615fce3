"""The embedded example's tools and data: incidents in an SQLite database.

`incidents.data` generates the database (seeded, standard library only); `incidents.tools`
holds the functions that `planc.toml` declares as tools. The database is
`examples/incidents/incidents.sqlite`, or the file `PLANC_INCIDENTS_DB` names; it is built on
first use.
"""

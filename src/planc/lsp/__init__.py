"""The language server (`planc lsp`): the check, hovers, completion, definitions and formatting in
an editor, over LSP. `server.py` holds the server and its handlers; `positions.py` turns offsets
into LSP positions and back, `cursor.py` says what is under the cursor, `describe.py` what a hover
says, and `project.py` finds the planc.toml a document is checked against.

It needs pygls and lsprotocol (`pip install 'planc[lsp]'`); nothing else in planc imports it.
"""

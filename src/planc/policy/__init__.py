"""Cedar policies over the calls a plan makes (DESIGN section 6, docs/policy.md).

`load_policy` reads a policy file; `decide` judges one call. The policy pass
(`planc.passes.policy`) asks about every step before anything runs, and the
interpreter asks again before each dispatch, with the real arguments.
"""

from planc.policy.decide import Decision, decide
from planc.policy.load import (
    DEFAULT_PRINCIPAL,
    Policy,
    PolicyError,
    check_principal,
    configured_policy_path,
    load_policy,
    policy_from_text,
)

__all__ = [
    "DEFAULT_PRINCIPAL",
    "Decision",
    "Policy",
    "PolicyError",
    "check_principal",
    "configured_policy_path",
    "decide",
    "load_policy",
    "policy_from_text",
]

"""The rule language: ``.py-sandboxes`` text in, an immutable compiled :class:`Policy` out.

This room knows nothing of guards or providers.
"""

from ..errors import RuleProblem, RuleSyntaxError
from .context import Rule
from .loader import OPTIONAL_INCLUDES, RULE_FILE_NAME, load_policy
from .origin import CODE, COMMAND_LINE, Origin
from .policy import Policy, Setting
from .template import render_template

__all__ = [
    "CODE",
    "COMMAND_LINE",
    "OPTIONAL_INCLUDES",
    "RULE_FILE_NAME",
    "Origin",
    "Policy",
    "Rule",
    "RuleProblem",
    "RuleSyntaxError",
    "Setting",
    "load_policy",
    "render_template",
]

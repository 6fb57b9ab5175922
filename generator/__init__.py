"""trainstack: compile a declarative LLM-training spec into Pulumi programs for Alibaba Cloud.

The public library API is :mod:`generator.api`; everything else is internal and may change.
"""

__version__ = "0.1.0"

"""Stage 4, preview: run a stack folder under Pulumi's mock runtime (``mockrun``) and judge the resulting graph:
secure-by-default rules (``lint``) and classified differences between two graphs (``diff``).
"""

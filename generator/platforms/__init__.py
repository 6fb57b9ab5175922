"""The platforms a cluster runs on: ECS (``ecs``), Lingjun (``lingjun``, eflo) and PAI-DLC (``dlc``), one folder each
owning that platform's rules, plan parts and template parts.
"""

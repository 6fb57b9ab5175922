"""PAI-DLC: the platform's plan parts (``plan``) and how its jobs get base weights (``weights``)."""

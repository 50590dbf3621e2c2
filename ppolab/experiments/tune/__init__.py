"""`ppolab tune`: an Optuna study over train flags (study.py), its search space, and its report."""

"""Drift on the base branch: where a row's stored rate stepped (change points), and rows whose
measurements stopped coming.

    find_change_points(rates) -> [ChangePoint]          # one series, oldest first
    load_branch(store, branch, target, limit) -> BranchHistory
    scan(history, recent) -> DriftReport                # `perfbot drift`
"""

"""perfbot: the CI bot (runner, results store, comparison, coverage, GitHub)."""

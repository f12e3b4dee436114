"""The machinery that runs papers: the papermill runner, the runs ledger (SQLite), the claims tables, stored full-scale
results and the CLI."""

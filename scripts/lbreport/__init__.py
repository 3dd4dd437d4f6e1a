"""layerbench's reports: results files -> tables, plots, comparisons, a dashboard, exports.

The entry points are the executables beside this package (scripts/report, compare,
dashboard, export); each is a thin wrapper around main() of the module of the same name.
"""

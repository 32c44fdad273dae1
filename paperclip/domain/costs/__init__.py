"""Costs and budgets: prices, the budget ledger (reservations and charges by month),
budgets and the cost reports.

Imports: companies
"""

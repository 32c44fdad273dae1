"""Companies: every row belongs to one; a company's settings, its issue prefix, and the
lock its writes take.

Imports: none
"""

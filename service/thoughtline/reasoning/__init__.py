"""Inline reasoning: reasoning a model wrote into its visible text, in one of the dialects.

`dialects` is the table (data only); `scanner` finds every dialect's blocks in a whole text or
one that arrives in pieces.
"""

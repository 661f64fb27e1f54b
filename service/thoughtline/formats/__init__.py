"""Inline reasoning in visible text (`inline_reasoning`) and its `dialects` table: the
reasoning layer, which every reader's turn -> record step runs."""

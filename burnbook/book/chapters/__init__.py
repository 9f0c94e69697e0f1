"""One module per chapter, `chNN.py`: `TITLE`, `EXERCISES` (a list of
`burnbook.book.Exercise`, one per checkable exercise) and `EXPLAINED`
({number: title} for exercises answered in words)."""

"""The openai_responses provider, in one folder: its body reader (`body`), stream assembler
(`stream`) and row (`row`)."""

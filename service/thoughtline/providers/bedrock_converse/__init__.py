"""The bedrock_converse provider, in one folder: its body reader (`body`), stream assembler
(`stream`) and row (`row`)."""

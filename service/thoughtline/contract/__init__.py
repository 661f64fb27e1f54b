"""The contract every layer shares: the record and its parts (msgspec Structs), the error
tree, the detection codes, the names (`FormatName`, `DialectName`) and the generated JSON
Schemas. It imports nothing else of the package."""

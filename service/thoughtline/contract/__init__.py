"""The contract every layer shares: the record and its parts (msgspec Structs), the error
tree, the detection codes, the names (`FormatName`, `DialectName`) and the generated JSON
Schemas; and `first_use`, the packages' names imported at first use. It imports nothing else
of the package."""

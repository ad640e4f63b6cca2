"""OS providers: one module per provider (this room never decides a rule)."""

"""What the rail, `/context` and `/usage` show, and the fill timeline."""

"""Fakes and fixtures shared by the tests: protocol-faithful fake engines on loopback."""

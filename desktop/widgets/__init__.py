"""Small widgets the windows are built from; each renders what it is told and decides nothing."""

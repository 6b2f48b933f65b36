"""The window Brim accounts against: resolved, learned, vetted, and the room an answer gets."""

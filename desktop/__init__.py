"""Brim's Qt application: shows engine state and sends user intents; decides nothing."""

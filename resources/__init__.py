"""Brim's shipped files: model-facing prompts, the default agent file, the style sheet, icons.

They are data, not code: read them with `importlib.resources.files("resources")` (the engine's
loader is engine/resources.py). Every file is read exactly as it is stored: a prompt that
ends without a newline is stored without one, and `{name}` placeholders are filled in by the
code that formats the prompt (a literal brace is doubled there, as in `str.format`).

    prompts/   what Brim asks of a model (checkpoints, guided questions, memory, the agent)
    agents/    the agent file a fresh install starts with
    style/     the Qt style sheet; `${NAME}` placeholders are desktop/theme.py's colours
    icons/     the application icon the desktop entry names
"""

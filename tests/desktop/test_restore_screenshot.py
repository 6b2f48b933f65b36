"""The restore screenshot comes from a script over the real app; it runs and writes it."""

from pathlib import Path

from PySide6.QtGui import QImage

from tests.desktop.make_restore_screenshot import make_restore_screenshot


def test_the_restore_screenshot_script_writes_the_view_asking_to_confirm(qtbot, tmp_path: Path):
    path = make_restore_screenshot(tmp_path)
    assert path.name == "compaction-restore.png"
    image = QImage(str(path))
    assert (image.width(), image.height()) == (1280, 800)

"""The screenshot path: the real entry point runs one exchange, saves the window, and exits."""

from PySide6.QtGui import QImage

from tests.desktop.make_screenshot import make_screenshot


def test_the_screenshot_option_saves_the_window_at_1280_by_800_and_exits_cleanly(qtbot, tmp_path):
    out = tmp_path / "shot.png"
    assert make_screenshot(out) == 0
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1280, 800)
    # More than a blank canvas: the window painted several distinct colours.
    colours = {image.pixel(x, y) for x in range(0, 1280, 16) for y in range(0, 800, 16)}
    assert len(colours) > 5

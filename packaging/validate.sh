#!/bin/sh
# Validate the desktop entry and the AppStream metainfo with the standard tools, where they
# are installed; say plainly which check was skipped and how to get it.
set -eu
here=${0%/*}
status=0

if command -v desktop-file-validate >/dev/null 2>&1; then
    echo "desktop-file-validate $here/io.brim.Brim.desktop"
    desktop-file-validate "$here/io.brim.Brim.desktop" || status=1
else
    echo "SKIPPED desktop entry check: desktop-file-validate is not installed (Debian package desktop-file-utils)"
fi

if command -v appstreamcli >/dev/null 2>&1; then
    echo "appstreamcli validate --no-net $here/io.brim.Brim.metainfo.xml"
    appstreamcli validate --no-net "$here/io.brim.Brim.metainfo.xml" || status=1
else
    echo "SKIPPED metainfo check: appstreamcli is not installed (Debian package appstream)"
fi

exit $status

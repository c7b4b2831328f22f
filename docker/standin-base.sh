#!/usr/bin/env bash
# Builds a local stand-in for the `python:3.12-slim` base image where it cannot be pulled (no registry access):
# a Debian bookworm rootfs (debootstrap) with this host's CPython 3.12 under /usr/local, as the official image
# has it, plus this host's extra CA certificates so pip inside the build can verify PyPI through the local
# egress. Imported with `docker import` under the official name. For local testing only; the Dockerfile itself
# stays standard. Usage: docker/standin-base.sh [TAG]   (run as root)
set -euo pipefail
tag=${1:-python:3.12-slim}
python=$(command -v python3.12 || ls -d "$HOME"/.pyenv/versions/3.12*/bin/python3.12 | tail -n 1)
prefix=$("$python" -c 'import sys; print(sys.base_prefix)')
rootfs=$(mktemp -d /tmp/standin-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }
debootstrap --variant=minbase --include=ca-certificates,libssl3,libsqlite3-0,libffi8,zlib1g,libbz2-1.0,liblzma5,libreadline8,libncursesw6,libuuid1,libgdbm6 \
  bookworm "$rootfs" http://deb.debian.org/debian >/dev/null
# CPython 3.12 as the official image installs it: /usr/local/bin/python3.12, python3, python, pip.
cp -a "$prefix"/. "$rootfs/usr/local/"
chroot "$rootfs" ldconfig  # /usr/local/lib/libpython3.12.so
for name in python3 python; do ln -sf python3.12 "$rootfs/usr/local/bin/$name"; done
for name in pip3 pip; do ln -sf pip3.12 "$rootfs/usr/local/bin/$name"; done
# The host's extra CA certificates, trusted system-wide in the stand-in (pip and apt use the system bundle).
cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/" 2>/dev/null || true
chroot "$rootfs" update-ca-certificates >/dev/null
chroot "$rootfs" /usr/local/bin/python3.12 -c 'import ssl, sqlite3, ctypes, venv' # the stdlib works
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
tar -C "$rootfs" -c . | docker import \
  -c 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
  -c 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
  -c 'CMD ["python3"]' - "$tag" >/dev/null
echo "stand-in base image: $tag"

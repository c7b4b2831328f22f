#!/usr/bin/env bash
# No arguments: the quick suite, records in /out/results, report in /out. Arguments starting with "-": options
# of `stanjax run` (e.g. --suite tiny, --suite gpu), then the report. Anything else: passed to `stanjax` as is.
set -euo pipefail
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  exec stanjax "$@"
fi
if ! touch /out/.write-test 2>/dev/null; then
  echo "stanjax (docker): /out is not writable by uid $(id -u); mount a folder there that it can write, e.g." \
       "mkdir -p out && chmod a+w out && docker run --rm -v \"\$PWD/out:/out\" stanjax" >&2
  exit 2
fi
rm -f /out/.write-test
status=0
stanjax run --suite quick --out /out/results "$@" || status=$?
if [ "$status" -le 1 ]; then  # 1: a run failed; its record is there and the report shows it
  stanjax report /out/results -o /out
fi
exit "$status"

# Shared by the API benchmark scripts (run.sh, reads.sh): source it.

# free_port prints a loopback port nothing listens on (another process on a fixed port would be
# measured instead of ours).
free_port() {
  local p
  for p in $(shuf -i 20000-40000 -n 200); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "${0##*/}: no free port" >&2; exit 1
}

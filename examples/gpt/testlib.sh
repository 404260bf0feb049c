# Sourced by the shell tests of examples/gpt: check DESCRIPTION COMMAND... runs the command,
# prints "ok: DESCRIPTION" or "FAIL: DESCRIPTION", and sets fail=1 on failure (exit $fail at
# the end of the test).
fail=0
check() {
    desc=$1; shift
    if "$@"; then echo "ok: $desc"; else echo "FAIL: $desc"; fail=1; fi
}

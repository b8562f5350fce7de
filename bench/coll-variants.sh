# Sourced by bench/h200-coll.sh (HOST_ABLATE) and bench/h200-coll-lat.sh (VARIANTS): the JVM options of a named
# variant of `gdrkit coll`, one table for both. Prints nothing for "default"; a name it does not know is returned
# as is when it starts with -D (one option), else the function fails. red<N>: large host reductions on N threads
# (gdrkit.coll.reduce.threads; red1 is the single-threaded reduction). nopause: idle polls without PAUSE
# (gdrkit.coll.spin.pause=false, the default since 78d0345; pause: with PAUSE, the earlier default); bind: each rank's collectives thread pinned to one CPU (gdrkit.coll.bind=core);
# bindnp: both; ownnp: own (below) without PAUSE.
coll_variant_opts() {
  case "$1" in
    default) echo "" ;;
    noeager) echo "-Dgdrkit.coll.eager.bytes=0" ;;
    mtu64k) echo "-Dgdrkit.ib.software.mtu=65536" ;;
    nodirect) echo "-Dgdrkit.coll.direct.bytes=0" ;;
    direct1m) echo "-Dgdrkit.coll.direct.bytes=1048576" ;;
    direct256k) echo "-Dgdrkit.coll.direct.bytes=262144" ;;
    noshm) echo "-Dgdrkit.coll.shm.direct=false" ;;
    nopause) echo "-Dgdrkit.coll.spin.pause=false" ;;
    pause) echo "-Dgdrkit.coll.spin.pause=true" ;;
    bind) echo "-Dgdrkit.coll.bind=core" ;;
    bindnp) echo "-Dgdrkit.coll.bind=core -Dgdrkit.coll.spin.pause=false" ;;
    ownnp) echo "-Dgdrkit.nic.progress=own_device -Dgdrkit.nic.backstop.us=200 -Dgdrkit.coll.spin.pause=false" ;;
    cma64k) echo "-Dgdrkit.nic.shm.cma.threshold=65536" ;;
    shmbatch) echo "-Dgdrkit.nic.shm.batch=true" ;;
    shmbatch128) echo "-Dgdrkit.nic.shm.batch=true -Dgdrkit.nic.batch=128" ;;
    dedspin) echo "-Dgdrkit.nic.progress=dedicated -Dgdrkit.nic.idle=spin" ;;
    dedyield) echo "-Dgdrkit.nic.progress=dedicated -Dgdrkit.nic.idle=yield" ;;
    own) echo "-Dgdrkit.nic.progress=own_device -Dgdrkit.nic.backstop.us=200" ;;
    bs[0-9]*) echo "-Dgdrkit.nic.backstop.us=${1#bs}" ;;
    engines[0-9]*) echo "-Dgdrkit.nic.copy.engines=${1#engines}" ;;
    red[0-9]*) echo "-Dgdrkit.coll.reduce.threads=${1#red}" ;;
    -D*) echo "$1" ;;
    *) return 1 ;;
  esac
}

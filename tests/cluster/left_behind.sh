# left_behind.sh (sourced by the cluster tests): left_behind ID prints what cluster ID left on
# the machine (namespaces, its state directory, links, processes) and fails when anything is
# left; cluster.sh's run must have removed it all, also when the job failed.
left_behind() {
    LEFT=""
    ip netns list | grep -q "^$1-" && LEFT="$LEFT namespaces($(ip netns list | grep "^$1-" | tr '\n' ' '))"
    [ -e "/run/flcluster/$1" ] && LEFT="$LEFT state(/run/flcluster/$1)"
    ip -o link | grep -q "$1" && LEFT="$LEFT links"
    P=$(pgrep -f "/run/flcluster/$1/")
    [ -n "$P" ] && LEFT="$LEFT processes($P)"
    [ -z "$LEFT" ] || { echo "FAIL: left behind:$LEFT"; return 1; }
}

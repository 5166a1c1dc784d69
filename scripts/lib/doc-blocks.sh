# Sourced by the doc checks: prints the fenced ```sh blocks of a Markdown file that follow a line
# starting with `<!-- ci: <marker>`, in order, so a check runs the commands exactly as documented.
doc_blocks() {
  awk -v marker="<!-- ci: $2" '
    index($0, marker) == 1 && (substr($0, length(marker) + 1, 1) ~ /^[ :]?$/) { armed = 1; next }
    armed && /^```sh$/ { inside = 1; armed = 0; next }
    inside && /^```$/ { inside = 0; next }
    inside { print }
  ' "$1"
}

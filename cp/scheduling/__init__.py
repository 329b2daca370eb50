"""The scheduler's pure libraries, shared by the scheduler controller and the API server's "why":
`plugins` (kube-scheduler's filter and score plugins over plain objects) and `explain` (the search that
says why a pod is not scheduled, or where it could go)."""

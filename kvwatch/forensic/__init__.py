"""`kvwatch report`: the forensic report, one self-contained HTML file of charts drawn from logs.

`collect` gathers what the charts draw (from a replay's events, or from the daemon's windows),
`charts` turns it into chart specifications (downsampled for drawing, min and max per bucket), `page`
renders the HTML with the vendored chart library inlined, and `command` is the subcommand.
"""

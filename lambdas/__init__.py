"""One thin handler per Step Functions state: parse the event, call ``ferry``, return a dict."""

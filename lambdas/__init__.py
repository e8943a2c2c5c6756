"""One thin handler per Step Functions state: the event validated into the state's input
model (``ferry.payloads``), one ``ferry.steps.Steps`` call, its result model returned as JSON."""

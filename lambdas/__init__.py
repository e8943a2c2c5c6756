"""One thin handler per Step Functions state: the event validated into the state's input
model (``ferry.statemachine.*_payloads``), one call of its state module
``ferry/states/<state>.py``, its result model returned as JSON."""

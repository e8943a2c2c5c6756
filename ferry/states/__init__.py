"""One module per state of the definitions (``ferry/statemachine/*.asl.json``), and per
function a rule, a schedule or a command invokes.

``ferry/states/<state>.py`` is named after its handler, ``lambdas/<state>.py``, and its
test, ``tests/…/test_<state>.py``; its ``run`` takes what the states share
(``ferry.states.context.StateContext``; the change feeds' states take ``ferry.feeds``'
``ChangeFeeds``) and the state's input model, and returns its result model
(``ferry.statemachine.*_payloads``, one module per group of functions). The in-process driver
(``ferry.commands.in_process``) runs the same modules. A state module keeps its state's name;
the domain it calls is named for its concept (``ferry.planning.table_plan``,
``ferry.lifecycle.committing``, ``ferry.lifecycle.aborting``,
``ferry.lifecycle.retired_snapshots``), so no two modules share a name.
No state module imports another, but Summarize runs Abort's for a table no Catch took.
"""

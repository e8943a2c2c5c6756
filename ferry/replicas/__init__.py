"""What makes a table a Ferry replica and what it owns: its parameters and guard
(``replica``), whose replica a location is (``ownership``), and the state store that outlives
one run — the snapshot ledger and the replica locks (``ledger``).
"""

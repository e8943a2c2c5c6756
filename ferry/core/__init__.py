"""What every concept of Ferry speaks: its named errors, the value objects of a table and a
partition, the clock and the event id, injected faults, resource names, durations, and the
Node.js process the CDK's runtime needs.

Nothing here imports another of Ferry's packages.
"""

"""The read commands: inspection, export and the incident report; none writes a ledger."""

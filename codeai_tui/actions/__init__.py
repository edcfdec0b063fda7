"""The write actions: every gated write an operator can make to a ledger."""

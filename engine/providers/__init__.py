"""One module per engine behind one interface (`base.Provider`), plus error classification."""

"""Numbers, units and answers as users type and read them: the whitelist parser of typed values, exact unit conversion, printing, and checking an answer against the engine's."""

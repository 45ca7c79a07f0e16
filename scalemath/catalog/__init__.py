"""The catalogs: real chips (hardware.toml), real models (models.toml), a user's own TOML or Hugging Face config.json, and the state-dict count that checks a model's parameters by a second route."""

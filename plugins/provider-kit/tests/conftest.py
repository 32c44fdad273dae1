pytest_plugins = ["paperclip_provider_kit.fixtures"]

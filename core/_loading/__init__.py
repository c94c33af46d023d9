"""From files and entry points to plugins: config layers, trust, scope, plugins, hooks, descriptions."""

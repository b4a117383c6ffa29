from django.apps import AppConfig


class AgentConfig(AppConfig):
    """The agent stands above the engine and recall: the turn, its tools, ACP (``manage.py
    acp``). It has no models; it is an app for its command."""

    name = "agent"
    verbose_name = "Agent"

"""What waits on a person: holds (a run's task held until someone acts) and
interactions (the cards a run raises and a person answers).

Imports: companies, issues, runs
"""

"""`kvwatch probe`: a synthetic conversation sent twice to an endpoint: does its prefix come back cached?"""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from webapp.accounts import views as accounts_views
from webapp.core import views as core_views

admin.site.site_header = admin.site.site_title = "tirlab administration"

urlpatterns = [
    path("", core_views.home, name="home"),
    path("healthz", core_views.health, name="health"),
    path("tokens/", accounts_views.tokens, name="tokens"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("webapp.api_urls")),
    path("mlflow/", include("webapp.tracking.urls")),
    path("", include("webapp.ui.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI with a bar back to the dashboard (templates/api_docs.html).
    path(
        "api/docs/",
        SpectacularSwaggerView.as_view(url_name="schema", template_name="api_docs.html"),
        name="swagger-ui",
    ),
]

handler404 = core_views.not_found
handler500 = "webapp.core.unavailable.server_error"

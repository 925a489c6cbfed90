// Placeholder: being written.
namespace spinnic::roce {}
